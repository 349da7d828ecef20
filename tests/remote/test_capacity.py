"""``find_max`` in a campaign whose servers run on the SSH host: each start's capacity
found there, stored here with its probes as points, and compared over starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.campaign.helpers import query, write_campaign
from tests.campaign.test_capacity import BENCH
from tests.remote.helpers import run
from tests.remote.sshd import Remote


def test_each_start_on_the_host_finds_its_capacity_and_the_report_compares_them(
    host: Remote, tmp_path: Path
) -> None:
    """Two variants, two starts each, every one on the host: four capacities stored with
    their attempts, each probe a point, the faster variant's capacity higher at every start,
    the report's ratio over starts "better"; energy absent (no GPU there), not zero."""
    variants = '[[variant]]\nname = "baseline"\n[[variant]]\nname = "fast"\nargs = "--itl-ms 6"\n'
    path = write_campaign(tmp_path, variants, bench=BENCH, name="remote-capacity",
                          server_extra=f'host = "{host.alias}"')  # fmt: skip
    text = path.read_text().replace("output_len = 4", "output_len = 16")
    path.write_text(text.replace("{python}", host.python))
    db = tmp_path / "c.db"
    done = subprocess.run([sys.executable, "-m", "servegate", "run", str(path), "--db", str(db),
                           "-q"], capture_output=True, text=True, timeout=600, check=False,
                          env=host.env(), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = query(db, "SELECT v.name, c.start, a.host, c.json FROM capacity c "
                     "JOIN variant v ON v.id = c.variant_id JOIN attempt a ON a.id = c.attempt_id "
                     "ORDER BY v.name, c.start")  # fmt: skip
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (name, start, host.alias) for name in ("baseline", "fast") for start in (1, 2)
    ]
    found = {(str(r[0]), int(str(r[1]))): json.loads(str(r[3])) for r in rows}
    for data in found.values():
        assert data["value"] is not None and not data["censored"], data["words"]
        assert data["bracket"]["passes"] <= data["value"] < data["bracket"]["fails"]
    for start in (1, 2):
        assert found[("fast", start)]["value"] > 2 * found[("baseline", start)]["value"]
    points = query(db, "SELECT detail FROM point")
    assert len(points) == sum(len(d["probes"]) for d in found.values())
    energies = [json.loads(str(p[0]))["energy"] for p in points]
    assert all(e["energy_j"] is None and e["reason"] for e in energies), energies[0]
    out = tmp_path / "r.json"
    report = subprocess.run([sys.executable, "-m", "servegate", "report", "--db", str(db),
                             "--json-file", str(out)], capture_output=True, text=True,
                            timeout=120, check=False)  # fmt: skip
    assert report.returncode == 0, report.stderr
    (comp,) = json.loads(out.read_text())["capacity"]["comparisons"]
    assert comp["call"] == "better", comp["words"]
    assert run(host, "cli", "ps")[:2] == (0, [])
