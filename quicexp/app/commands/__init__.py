"""Subcommands of ``quicexp`` whose work lives in the simulator, the stats engine and the qlog job."""
