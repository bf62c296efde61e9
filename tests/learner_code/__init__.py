"""Independent learner implementations that judge the checkers (see README.md)."""
