"""Edits fields of a checkpoint's checkpoint.json for a test, writing IN's manifest with the
edits to OUT: KEY=JSON sets a top-level field, metadata.KEY=JSON a metadata entry. The result
is a version 1 manifest (no checksums), which rp-run still loads, so that the edited field is
what the test reaches, not the checksum that would refuse any edit.

usage: edit_checkpoint.py IN OUT EDIT...
"""
import json
import sys

src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(src) as f:
    manifest = json.load(f)
manifest["version"] = 1
manifest.pop("checksums", None)
manifest.pop("manifest_checksum", None)
for edit in edits:
    key, value = edit.split("=", 1)
    if key.startswith("metadata."):
        manifest["metadata"][key[len("metadata."):]] = json.loads(value)
    else:
        manifest[key] = json.loads(value)
with open(dst, "w") as f:
    json.dump(manifest, f, indent=2)
