// Verifies many Groth16 proofs in one Node process with snarkjs's groth16.verify, the function
// `snarkjs groth16 verify` calls on the same three JSON files (cli.js groth16Verify): the CLI
// pays ~0.8 s of start-up and curve set-up per proof, which long tests pay dozens of times.
// argv[2]: a JSON file of [[vk, public, proof], ...] paths; prints a JSON list of booleans.
const fs = require("fs");
const snarkjs = require("snarkjs");

const read = (path) => JSON.parse(fs.readFileSync(path, "utf8"));

async function main() {
    const answers = [];
    for (const [vk, pub, proof] of read(process.argv[2])) {
        answers.push(await snarkjs.groth16.verify(read(vk), read(pub), read(proof)));
    }
    process.stdout.write(JSON.stringify(answers) + "\n");
    process.exit(0);  // the curves' worker threads would keep Node alive
}

main().catch((e) => {
    process.stderr.write(`${(e && e.stack) || e}\n`);
    process.exit(2);
});
