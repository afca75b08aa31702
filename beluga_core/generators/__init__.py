"""Test-case generators: perturbation functions that build suite cases from source instances."""
