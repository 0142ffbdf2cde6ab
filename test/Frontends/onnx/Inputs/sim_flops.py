"""Compares the FLOPs the simulator charged with the plan report's, instruction by instruction.

Usage: sim_flops.py NAME REPORT.json TRACE.json
REPORT.json is the plan report of `rp-run PLAN --check --report-json` ("functions": each plan
function's "flops" and "instruction_flops"), TRACE.json the Chrome trace of `rp-run PLAN
--backend sim --trace` (each call's compute span has the args "function", "flops" and
"instruction_flops": what the simulator's roofline charged for it). Both write a function's
FLOPs as "<index>:<flops>" for each instruction with non-zero FLOPs (runtime/plan/PlanReport.h,
formatInstructionFlops).
Prints one line, "NAME: <F> functions called, <I> instructions with FLOPs, the simulator's
FLOPs equal the report's", or exits 1 naming (on stderr) the first instruction whose FLOPs
differ, a call the report does not list, or a trace without costed calls (a profile run).
"""
import json
import sys


def by_index(text: str) -> dict[int, int]:
    """{instruction index: FLOPs} of an "<index>:<flops> ..." string."""
    pairs = (item.split(":") for item in text.split())
    return {int(index): int(flops) for index, flops in pairs}


def first_difference(sim: dict[int, int], report: dict[int, int]) -> str:
    for index in sorted(set(sim) | set(report)):
        if sim.get(index, 0) != report.get(index, 0):
            return (f"instruction {index}: simulator {sim.get(index, 0)} FLOPs, report "
                    f"{report.get(index, 0)}")
    return "the totals differ"


def main() -> int:
    name, report_path, trace_path = sys.argv[1:4]
    listed = json.load(open(report_path))["functions"]
    functions = {f["name"]: f for f in listed}
    if len(functions) != len(listed):
        print(f"{name}: the report names two functions alike", file=sys.stderr)
        return 1
    events = json.load(open(trace_path))["traceEvents"]
    calls = [e["args"] for e in events
             if e.get("ph") == "X" and "instruction_flops" in e.get("args", {})]
    if not calls:
        print(f"{name}: the simulator's trace has no costed call", file=sys.stderr)
        return 1
    called = set()
    for call in calls:
        function = functions.get(call["function"])
        if function is None:
            print(f"{name}: the simulator called '{call['function']}', which the report does "
                  f"not list", file=sys.stderr)
            return 1
        sim, report = by_index(call["instruction_flops"]), by_index(function["instruction_flops"])
        if sim != report or int(call["flops"]) != function["flops"]:
            print(f"{name}: function '{call['function']}': {first_difference(sim, report)}",
                  file=sys.stderr)
            return 1
        called.add(call["function"])
    counted = sum(len(by_index(functions[f]["instruction_flops"])) for f in called)
    print(f"{name}: {len(called)} functions called, {counted} instructions with FLOPs, the "
          f"simulator's FLOPs equal the report's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
