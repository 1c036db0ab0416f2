"""Label models: Snorkel-facing estimators of labeling-function noise."""

from snorkel_structured.label_model.structured import StructuredLabelModel

__all__ = ["StructuredLabelModel"]
