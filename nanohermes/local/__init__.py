"""`--local`: the bundled small model served on loopback."""
