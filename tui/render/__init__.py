"""Results and comparisons as text for people and tools: units, the `show` report and the five
compare formats.
"""
