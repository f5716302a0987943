"""Filecoin's circuits rebuilt gadget by gadget with bellperson's R1CS (same rows, columns, coefficients)."""
