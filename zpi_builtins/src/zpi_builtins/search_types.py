"""grep's ``type`` table, apart from the file walker so the ``grep`` tool's schema can name the
types without importing the walker (every start registers the tool; few searches run)."""

from __future__ import annotations

__all__ = ["FILE_TYPES"]

#: grep's ``type``: name -> basename globs (ripgrep's definitions; ``rg --type-list``)
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "cpp": ("*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in",
            "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"),
    "cs": ("*.cs",), "css": ("*.css", "*.scss"), "csv": ("*.csv",), "dart": ("*.dart",),
    "docker": ("*Dockerfile*",), "elixir": ("*.eex", "*.ex", "*.exs"),
    "go": ("*.go",), "h": ("*.h", "*.hpp"), "html": ("*.ejs", "*.htm", "*.html"),
    "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "js": ("*.js", "*.jsx", "*.vue", "*.mjs", "*.cjs"), "json": ("*.json", "composer.lock"),
    "kotlin": ("*.kt", "*.kts"), "lua": ("*.lua",),
    "make": ("*.mak", "*.mk", "[Gg][Nn][Uu]makefile", "[Mm]akefile"),
    "markdown": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "md": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.phtml"), "proto": ("*.proto",),
    "py": ("*.py", "*.pyi"), "python": ("*.py", "*.pyi"),
    "rb": ("*.gemspec", "*.rb", "*.rbw", "Gemfile", "Rakefile", "config.ru"),
    "ruby": ("*.gemspec", "*.rb", "*.rbw", "Gemfile", "Rakefile", "config.ru"),
    "rust": ("*.rs",), "scala": ("*.sbt", "*.scala"),
    "sh": ("*.bash", "*.csh", "*.ksh", "*.sh", "*.tcsh", "*.zsh"), "sql": ("*.psql", "*.sql"),
    "swift": ("*.swift",), "toml": ("*.toml", "Cargo.lock"), "ts": ("*.ts", "*.tsx"),
    "typescript": ("*.ts", "*.tsx"), "txt": ("*.txt",), "xml": ("*.xml", "*.xsd", "*.xsl"),
    "yaml": ("*.yaml", "*.yml"), "zig": ("*.zig",), "rst": ("*.rst",),
}
