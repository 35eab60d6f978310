"""Reads shared by pages, their JSON twins and the CLI, so none of them can drift: one
module per family of panels (viewers, buffer, projections, faces, leaks).

Nothing here writes: opening a page must never change the store.
"""
