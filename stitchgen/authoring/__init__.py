"""Tools for template authors: what a block may use, and every mistake named.

The modules, each with one job (imported where used; this door imports none):

* ``attributes``: the attributes a template may read on an IR object, and
  the closest ones to a misspelt name (static checks and render-time errors
  say the same thing);
* ``typing_ir``: the IR types a template expression has, read from the IR's
  annotations;
* ``analysis``: a walk over Jinja's own AST of a template chain: where each
  block renders, what its scope holds and with which IR types, and the
  mistakes in the user's templates;
* ``checks``: every check of a :class:`~stitchgen.rendering.Templates`' own
  templates, run once per object before anything renders;
* ``lock``: the record of the shipped blocks an override sits on
  (``stitchgen templates lock``), and the stale ones after an upgrade;
* ``catalogue``: ``stitchgen templates blocks``, generated from the
  templates and the IR;
* ``preview``: ``stitchgen templates diff``, the code an override changes.
"""
