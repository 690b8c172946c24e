"""Prompt templates: one loader for every prompt family, packaged (novelty_audit/prompts/) or a project file.

Families render their own placeholders; this package only finds a template, reads its exact bytes and names
the file in every error, so the bytes a template puts into a call key are the file's bytes.
"""

from ._load import (
    JINJA_SUFFIXES,
    PACKAGED_LABEL,
    TEMPLATE_FILE_SUFFIXES,
    TemplateSource,
    is_template_file,
    packaged,
    packaged_dir,
    packaged_file,
    packaged_names,
    packaged_text,
    resolve_template,
)

__all__ = [
    "JINJA_SUFFIXES",
    "PACKAGED_LABEL",
    "TEMPLATE_FILE_SUFFIXES",
    "TemplateSource",
    "is_template_file",
    "packaged",
    "packaged_dir",
    "packaged_file",
    "packaged_names",
    "packaged_text",
    "resolve_template",
]
