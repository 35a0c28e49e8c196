"""Entry-point plugin ``zcode``.

The ZCode dialect (manifest lookup order, handler types, events, limits) is not implemented
yet; this plugin implements no hook and contributes nothing, as ``--list-plugins`` shows.
"""
