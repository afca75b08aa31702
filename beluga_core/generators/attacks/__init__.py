"""Model-dependent generators: adversarial attacks on a trained model (PWWS, HotFlip) and the counterfactual
sets built from what it relied on, with WordNet as their synonym source."""
