"""The inspector's pages, one module per page family. Each view: parse input -> call a
selector/service -> render.

One template per page; every swappable region is an inline partial whose name is its DOM id.
With `HX-Request: true` (and not a history restore) a panel URL answers with its fragment only.
"""
