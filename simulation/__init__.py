"""The seeded, mechanistic QUIC fleet simulator and the statistics validation study."""
