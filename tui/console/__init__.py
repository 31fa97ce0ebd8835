"""The Textual console: the app, its live model of a run, widgets and screens.  Nothing else
imports this package.
"""
