"""Presentation: how the command line shows what the product answers.

The jobs and the store answer with values (frozen dataclasses, typed rows); these modules turn
them into what a person or a script reads, and read what a person types:

* :mod:`cli.present.timeparse`: the times the commands accept, and the one way they print;
* :mod:`cli.present.render`: a :class:`~cli.present.render.Grid` as a table or CSV, a document
  as JSON;
* :mod:`cli.present.history`, :mod:`cli.present.audit`: the history's answers and the audit
  report as grids and JSON documents;
* :mod:`cli.present.history_plot`, :mod:`cli.present.audit_plot`: their charts (matplotlib, PNG).

Nothing below the command line imports these (``tests/test_architecture.py``).
"""
