"""Label models: Snorkel-facing estimators of labeling-function noise."""
