"""What the notebooks teach with: the exercises, pictures, measurements, plots and statistics of
the notebooks, the SFT and reward model behind the shipped checkpoints, and the claims scorecard.

One module (or subpackage) per concern, each opening with what it holds; docs/layout.md lists
them all with a line each (``tests/test_layout.py`` checks that list against this folder).
"""
