"""The composition root: the command line and the wiring that builds each front end's runtime."""
