"""The console's screens: compare, consent to system changes, save a plan."""
