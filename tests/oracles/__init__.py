"""Independent test oracles, written from the documentation and never imported from pandas_dp."""
