"""examples/classify_csv.py runs as the README says and labels every row with one of the labels."""
import csv
import io
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_classify_csv_example(model_path):
    labels = ["positive", "negative", "neutral"]
    run = subprocess.run([sys.executable, str(EXAMPLES / "classify_csv.py"), str(EXAMPLES / "reviews.csv"),
                          "-m", str(model_path), "--labels", *labels],
                         capture_output=True, text=True, timeout=300, check=True)
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    with open(EXAMPLES / "reviews.csv", newline="") as f:
        assert [r["text"] for r in rows] == [r["text"] for r in csv.DictReader(f)]
    assert all(r["label"] in labels for r in rows)
    # The clear cases (the 135M model is no judge of the neutral ones).
    assert [rows[i]["label"] for i in (0, 1, 6, 7)] == ["positive", "negative", "positive", "negative"]
    assert "classified 8 rows" in run.stderr
