"""The sections of eval/RESULTS.md in their order; each is NAME.md (its template) and NAME.py
(its figures, a `figures()` that returns {key: text} from the records)."""

ORDER = [
    "intro",
    "repeated",
    "evaluation",
    "saturation",
    "capacity",
    "cost",
    "openwhisk",
    "engines",
    "footprint",
    "soak",
    "reproduce",
]
