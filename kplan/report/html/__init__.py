"""`--html FILE`: the run as one self-contained HTML page (kplan's templates, rendered with Jinja2)."""
