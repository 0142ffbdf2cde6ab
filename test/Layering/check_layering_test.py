"""Tests of scripts/check_layering.py on small trees written to a temporary directory.

Each case writes a few source files with the includes under test and runs the checker on that
tree: allowed includes pass; each layering rule, broken once, fails with the file, the line and
the rule in the message.
"""

import importlib.util
import os
import sys
import tempfile
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
_SCRIPT = os.path.join(_HERE, "..", "..", "scripts", "check_layering.py")
_spec = importlib.util.spec_from_file_location("check_layering", _SCRIPT)
layering = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layering)


class CheckLayeringTest(unittest.TestCase):
    def tree(self, files):
        """Writes {path: text} under a fresh temporary root and returns the checker's errors."""
        with tempfile.TemporaryDirectory() as root:
            for path, text in files.items():
                full = os.path.join(root, path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w") as f:
                    f.write(text)
            return layering.check_tree(root)

    def test_table_is_acyclic_and_closed(self):
        self.assertEqual(layering.check_table(), [])

    def test_allowed_includes_pass(self):
        errors = self.tree({
            "runtime/exec/Executor.cpp": '#include "runtime/exec/Executor.h"\n'
                                         '#include "runtime/trace/Trace.h"\n#include <vector>\n',
            "passes/Schedule/Pass.cpp": '#include "mlir/IR/Builders.h"\n'
                                        '#include "passes/Graph/Passes.h"\n'
                                        '#include "runtime/partition/Profile.h"\n',
            "tools/rp-run/rp-run.cpp": '#include "runtime/train/Trainer.h"\n',
            "runtime/driver/Driver.cpp": '#include "runtime/train/Trainer.h"\n'
                                         '#include "runtime/sim/Simulate.h"\n',
        })
        self.assertEqual(errors, [])

    def test_runtime_including_compiler_fails(self):
        errors = self.tree({"runtime/exec/Executor.cpp":
                            '// x\n#include "compiler/PlanExport.h"\n'})
        self.assertEqual(len(errors), 1)
        self.assertIn('runtime/exec/Executor.cpp:2: includes "compiler/PlanExport.h": '
                      "runtime/exec (the runtime world) may not depend on compiler", errors[0])

    def test_runtime_including_mlir_fails(self):
        for include in ('#include "mlir/IR/Builders.h"\n', "#include <llvm/ADT/STLExtras.h>\n",
                        '#include "dialects/Graph/IR/GraphOps.h"\n',
                        '#include "passes/Passes.h"\n'):
            with self.subTest(include=include):
                errors = self.tree({"kernels/cpu/MatMul.cpp": include})
                self.assertEqual(len(errors), 1)
                self.assertIn("kernels/cpu (the runtime world) may not depend on", errors[0])

    def test_below_trainer_including_trainer_fails(self):
        errors = self.tree({"runtime/backends/cpu/CpuBackend.cpp":
                            '#include "runtime/train/Trainer.h"\n'})
        self.assertEqual(len(errors), 1)
        self.assertIn("runtime/backends/cpu (the runtime world) may not depend on runtime/train",
                      errors[0])

    def test_trainer_including_simulator_or_driver_fails(self):
        for include in ('#include "runtime/sim/Simulate.h"\n',
                        '#include "runtime/driver/Driver.h"\n'):
            with self.subTest(include=include):
                errors = self.tree({"runtime/train/Trainer.cpp": include})
                self.assertEqual(len(errors), 1)
                self.assertIn("runtime/train (the runtime world) may not depend on runtime/",
                              errors[0])

    def test_kernels_including_runtime_fails(self):
        errors = self.tree({"kernels/cpu/MatMul.cpp": '#include "runtime/exec/Executor.h"\n'})
        self.assertEqual(len(errors), 1)
        self.assertIn("kernels/cpu (the runtime world) may not depend on runtime/exec", errors[0])

    def test_table_arrow_back_up_fails(self):
        saved = dict(layering.ALLOWED)
        try:
            layering.ALLOWED["kernels/cpu"] = layering.ALLOWED["kernels/cpu"] + ["runtime/io"]
            errors = layering.check_table()
        finally:
            layering.ALLOWED.clear()
            layering.ALLOWED.update(saved)
        self.assertEqual(len(errors), 1)
        self.assertIn("kernels/cpu lists runtime/io, whose top-level folder comes after its own",
                      errors[0])

    def test_passes_including_compiler_fails(self):
        errors = self.tree({"passes/Export.cpp": '#include "compiler/PlanExport.h"\n'})
        self.assertEqual(len(errors), 1)
        self.assertIn("passes (the compiler world) may not depend on compiler", errors[0])

    def test_pass_kind_including_a_kind_above_fails(self):
        for path, include, message in (
                ("passes/Graph/Fuse.cpp", "passes/Schedule/Passes.h",
                 "passes/Graph (the compiler world) may not depend on passes/Schedule"),
                ("passes/Analysis/Mask.cpp", "passes/Graph/Passes.h",
                 "passes/Analysis (the compiler world) may not depend on passes/Graph")):
            with self.subTest(path=path):
                errors = self.tree({path: f'#include "{include}"\n'})
                self.assertEqual(len(errors), 1)
                self.assertIn(message, errors[0])

    def test_unknown_folder_fails(self):
        errors = self.tree({"runtime/newthing/X.cpp": '#include "base/Status.h"\n'})
        self.assertEqual(len(errors), 1)
        self.assertIn("runtime/newthing/ is in no component", errors[0])

    def test_main_exit_codes(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "base"))
            with open(os.path.join(root, "base", "A.h"), "w") as f:
                f.write('#include "base/B.h"\n')
            self.assertEqual(layering.main(["--root", root]), 0)
            with open(os.path.join(root, "base", "C.h"), "w") as f:
                f.write('#include "runtime/exec/Executor.h"\n')
            self.assertEqual(layering.main(["--root", root]), 1)
            self.assertEqual(layering.main(["--root", os.path.join(root, "missing")]), 2)


if __name__ == "__main__":
    sys.exit(unittest.main())
