"""Sets model-level metadata entries (ModelProto.metadata_props) of an ONNX file in place, as
examples/export/export_model.py writes them (rp.placeholder_weights, rp.checkpoint); external
data stays where it is.

usage: set_onnx_metadata.py MODEL.onnx KEY=VALUE...
"""
import sys

import onnx

path = sys.argv[1]
model = onnx.load(path, load_external_data=False)
for item in sys.argv[2:]:
    key, value = item.split("=", 1)
    entry = next((p for p in model.metadata_props if p.key == key), None) or \
        model.metadata_props.add()
    entry.key, entry.value = key, value
onnx.save(model, path)
