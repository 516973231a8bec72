"""`memflow bench`: speed and quality of the memory engine, measured here."""
