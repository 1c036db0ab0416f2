"""Parameter estimators that work on additive sufficient statistics of LF outputs."""
