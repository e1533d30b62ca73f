"""The static yardstick of bench/static.sh: SASS analysis, target facts, the cycle model."""
