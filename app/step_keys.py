"""The step-through's keyboard shortcuts (GP 1-D): n = one site, s = one sweep.

A Panel custom component: app/dashboard.py imports this module before any session's document
is made (see its note on custom components).
"""
from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["StepKeys"]


class StepKeys(JSComponent):
    """Keyboard shortcuts of the step-through: n = one site, s = one sweep (not while typing in
    an input). Each press sets ``key`` and counts ``presses``; the page watches ``presses``."""

    key = param.String(default="")
    presses = param.Integer(default=0)

    _esm = """
    export function render({ model }) {
      const onKey = (event) => {
        const path = event.composedPath ? event.composedPath() : [];
        if (path.some(el => ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName))) return;
        const key = (event.key || '').toLowerCase();
        if (key !== 'n' && key !== 's') return;
        model.key = key;
        model.presses = model.presses + 1;
      };
      document.addEventListener('keydown', onKey);
      model.on('remove', () => document.removeEventListener('keydown', onKey));
      return document.createElement('span');
    }
    """
