"""quicexp: configuration, Spark/catalog wiring and the `quicexp` command line."""
