"""The ``%rienda`` IPython extension (an empty shell until the magics issue lands)."""
