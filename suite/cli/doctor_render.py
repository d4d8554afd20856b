"""The doctor's report as text."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from suite.backends import _aclnn_lib as lib
from suite.contract import PRODUCTS
from suite.cli.doctor_diagnose import _not_found, searched, stops
from suite.cli.doctor_env import Report


# -- rendering -----------------------------------------------------------------------------------
def render(report: Report) -> str:
    """The report as text: environment, CANN, devices, families, smoke cases, problems, verdict."""
    lines: List[str] = [f"aclnn-conform doctor (backend {report.backend}"
                        + "".join(f", {k}={v}" for k, v in report.opts.items()) + ")", ""]
    env = report.environment
    lines.append("Environment")
    lines.append(f"  {'python':<16}{env['python']} ({env['executable']}), {env['platform']}")
    lines.append(f"  {'suite':<16}{env['suite']} at {env['suite_at']}; data {env['data']} ({env['data_from']})")
    for name, version in env["packages"].items():
        lines.append(f"  {name:<16}{version or 'not installed'}")
    lines += ["", "Protections of a run (the backend's process: suite/run/confine.py, suite/run/reaper.py)"]
    for name, words in env.get("protections", {}).items():
        lines.append(f"  {name:<16}{words}")
    lines += ["", "CANN"]
    lines += _render_cann(report.cann)
    lines += ["", "Product families: the dtypes the suite runs on each (from the operators' declarations)"]
    fams = report.families
    here = _families_here(report)
    for family in PRODUCTS:
        groups = fams["dtypes"][family]
        text = "; ".join(f"{', '.join(g['dtypes'])}" + ("" if len(groups) == 1 else f" ({', '.join(g['operators'])})")
                         for g in groups)
        lines.append(f"  {family:<17}{text}; {fams['cases'].get(family, 0)} cases"
                     + (f"   <- {here[family]}" if family in here else ""))
    if report.smoke:
        lines += ["", "Smoke cases (one per operator; the backend in its own process, judged against the golden, "
                      "as pytest runs it)" if any(r["cases"] for r in report.smoke) else
                  "Backend (started and closed in its own process; --no-smoke: no case run)"]
        for row in report.smoke:
            lines += _render_smoke(row)
    if report.notes:
        lines += ["", "Notes"] + [f"  - {n}" for n in report.notes]
    stopping = [p for p in report.problems if stops(p, report.backend)]
    others = [p for p in report.problems if not stops(p, report.backend)]
    for title, problems in ((f"Problems: these stop backend {report.backend}", stopping),
                            (f"Other problems (they do not stop backend {report.backend})", others)):
        if problems:
            lines += ["", title]
            for i, p in enumerate(problems, 1):
                lines.append(f"  {i}. {p.what}")
                lines.append(f"     fix: {p.fix}")
    lines += ["", f"{report.verdict} (exit {report.exit_code})"]
    return "\n".join(lines)


def _families_here(report: Report) -> Dict[str, str]:
    """family -> what here runs it: the devices' families, else the selected backend's products."""
    here: Dict[str, List[str]] = {}
    devices = report.cann.get("probe", {}).get("devices") or {"list": []}
    held = [d for d in devices["list"] if d.get("family")]
    for ids, d in _id_runs(held, lambda d: (d["family"], d["soc"])):
        here.setdefault(d["family"], []).append(f"device{'s' if '-' in ids else ''} {ids} ({d['soc']})")
    if not devices["list"]:
        for row in report.smoke:
            if row["backend"] == report.backend and row["started"] and not row["substitute"]:
                for p in row["products"]:
                    here.setdefault(p, []).append(f"backend {row['backend']}")
    return {f: ", ".join(v) for f, v in here.items()}


def _id_runs(devices: List[Dict[str, Any]], key: Callable[[Dict[str, Any]], Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """Devices with consecutive ids and the same key, as one ("0-7", first device) each."""
    out: List[Tuple[str, Dict[str, Any]]] = []
    start = 0
    for i in range(1, len(devices) + 1):
        if (i == len(devices) or key(devices[i]) != key(devices[start])
                or devices[i]["id"] != devices[i - 1]["id"] + 1):
            a, b = devices[start]["id"], devices[i - 1]["id"]
            out.append((str(a) if a == b else f"{a}-{b}", devices[start]))
            start = i
    return out


def _render_cann(cann: Dict[str, Any]) -> List[str]:
    t, v, probe = cann["toolkit"], cann["version"], cann["probe"]
    out = []
    if t["path"]:
        out.append(f"  {'toolkit':<16}{t['path']} (from {t['from']})" + ("" if t["exists"] else ": does not exist"))
    else:
        installed = ", ".join(i["path"] for i in t["installed"])
        out.append(f"  {'toolkit':<16}not named (no lib_dir; ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME and "
                   f"ASCEND_OPP_PATH unset)" + (f"; but one is installed at {installed}" if installed else
                                                 f"; none installed at {', '.join(t['looked_in'])}"))
    if v["version"]:
        out.append(f"  {'version':<16}{v['version']} (from {v['source']})")
    else:
        out.append(f"  {'version':<16}unknown" + (f" (looked in {', '.join(v['looked_in'])})" if v["looked_in"]
                                                   else " (no toolkit folder to look in)"))
    for name in (lib.RUNTIME_LIB, lib.TENSOR_LIB, *lib.OP_LIBS):
        item = probe["libraries"].get(name)
        if item is None:
            out.append(f"  {name:<16}not looked for")
        elif item["found"]:
            out.append(f"  {name:<16}{item['path']}" + (" (by the dynamic loader)" if item.get("via") == "loader" else ""))
        elif _not_found(item):
            either = name in lib.OP_LIBS and any(probe["libraries"].get(n, {}).get("found") for n in lib.OP_LIBS)
            out.append(f"  {name:<16}not found" + (" (either operator library will do)" if either else ""))
        else:
            out.append(f"  {name:<16}{item['error']}")
    if probe["libraries"]:
        out.append(f"  {'searched':<16}{searched(probe)}")
    if probe["operators"] and any(probe["libraries"].get(n, {}).get("found") for n in lib.OP_LIBS):
        out.append(f"  {'operators':<16}aclnn<Op>GetWorkspaceSize and aclnn<Op>, each:")
        width = max(len(i["op"]) for i in probe["operators"])
        for item in probe["operators"]:
            state = (f"found in {item['library']}" if item["library"] else
                     f"MISSING (searched {', '.join(item['searched'])})")
            out.append(f"    {item['op']:<{width}}  {state}")
    else:
        out.append(f"  {'operators':<16}not checked (no operator library loaded)")
    devices = probe["devices"]
    if probe["error"]:
        out.append(f"  {'probe':<16}{probe['error']}")
    if probe["device_error"]:
        out.append(f"  {'devices':<16}{probe['device_error']}")
    elif devices is None:
        out.append(f"  {'devices':<16}not probed (no usable {lib.RUNTIME_LIB})")
    else:
        out.append(f"  {'devices':<16}{devices['count']} (aclrtGetDeviceCount)")
        for ids, d in _id_runs(devices["list"], _device_text):
            out.append(f"    device {ids}: {_device_text(d)}")
        probed = len(devices["list"])
        if probed < devices["count"]:
            ids = str(probed) if probed == devices["count"] - 1 else f"{probed}-{devices['count'] - 1}"
            out.append(f"    device {ids}: not probed (the probe stopped first)")
    return out


def _device_text(d: Dict[str, Any]) -> str:
    if d.get("error"):
        return d["error"]
    if d.get("family"):
        return f"SoC {d['soc']} -> {d['family']}"
    return f"SoC {d['soc']}: refused: {d.get('refused')}"


def _render_smoke(row: Dict[str, Any]) -> List[str]:
    shown = {} if row["substitute"] else row["opts"]       # (the emulator's temporary folder is gone)
    head = f"  {row['label']}" + "".join(f", {k}={v}" for k, v in shown.items())
    if not row["started"]:
        return [f"{head}: {row['why']}"]
    out = [f"{head}: stands for {', '.join(row['products'])}; started in {row['start_seconds']:.2f} s"]
    width = max((len(c["op"]) for c in row["cases"]), default=0)
    for c in row["cases"]:
        why = f": {c['why']}" if c["why"] else ""
        out.append(f"    {c['op']:<{width}}  {c['outcome']:<7} {c['seconds']:.3f} s  {c['case'] or '-'}{why}")
    if row.get("incident"):
        out.append(f"    (on close: {row['incident']})")
    return out
