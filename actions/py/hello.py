# A Python action as OpenWhisk's python runtime takes it: `main` gets the parameters as a dict
# and returns a dict. Its top level runs once, at /init, into the action's snapshot; every
# activation starts from there.
import os
from datetime import datetime, timezone

GREETINGS = {"en": "Hello", "de": "Hallo", "fr": "Bonjour"}


def main(args):
    name = args.get("name", "stranger")
    lang = args.get("lang", "en")
    print(f"greeting {name} in {lang}")
    return {
        "greeting": f"{GREETINGS.get(lang, GREETINGS['en'])}, {name}!",
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "activation": os.environ.get("__OW_ACTIVATION_ID"),
    }
