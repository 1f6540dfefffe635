"""Reports: submission, fallback reports and delivery to the lead."""
