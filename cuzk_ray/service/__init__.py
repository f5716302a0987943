"""The long-running proving service (issue 16, docs/SERVICE.md): a Ray Serve ingress (app) in
front of one engine actor (engine_actor) around the service's core (service: the loop, resident
keys from keys, the durable store), typed records in models; server starts and stops it all;
client is the batch job's side (jobs/prove.py service.url=...). Importing this package imports
neither Ray nor FastAPI."""
