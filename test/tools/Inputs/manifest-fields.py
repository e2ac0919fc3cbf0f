"""Prints top-level fields of the manifest embedded in an artifact.

usage: manifest-fields.py ARTIFACT KEY...

The manifest is the artifact's one JSON object that starts with
`{"abi_version"` (the writer orders keys alphabetically). Prints `KEY VALUE`
per key, in the order given, with `-` for a key the manifest lacks.
"""
import json
import sys

data = open(sys.argv[1], "rb").read()
start = data.find(b'{"abi_version"')
if start < 0:
    sys.exit(f"{sys.argv[1]}: no manifest")
manifest, _ = json.JSONDecoder().raw_decode(data[start:].decode("utf-8", "replace"))
for key in sys.argv[2:]:
    print(key, json.dumps(manifest[key]) if key in manifest else "-")
