"""The console's panels: catalogue tree, params form, plots, stats and hot symbols."""
