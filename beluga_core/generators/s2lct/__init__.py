"""S²LCT: capability specs, the reference grammar and its expansion of seed sentences, and the sentiment
lexicon they fill from."""
