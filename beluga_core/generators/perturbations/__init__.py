"""CheckList-style perturbations: word-level edits of an instance's context and of its entities."""
