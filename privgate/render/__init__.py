"""Reports of gate runs: a self-contained HTML file with plots, and JSON."""

from .reports import render_html, report_dict, write_html_report, write_json_report

__all__ = ["render_html", "report_dict", "write_html_report", "write_json_report"]
