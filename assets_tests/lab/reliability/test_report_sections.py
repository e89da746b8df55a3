from freshness_pipeline.lab.reliability.report_sections import write_section


def test_a_section_is_replaced_in_place_and_others_are_kept(tmp_path):
    report = tmp_path / "RELIABILITY.md"
    write_section(report, "chaos", "# Chaos\nrun 1")
    write_section(report, "soak", "## Soak\nhour 1")
    write_section(report, "chaos", "# Chaos\nrun 2")
    text = report.read_text()
    assert "run 1" not in text and "run 2" in text and "hour 1" in text
    assert text.index("run 2") < text.index("hour 1")  # replaced where it was
    assert text.count("chaos:begin") == 1 and text.count("soak:end") == 1
