"""Methods as plug-ins (:mod:`tff_idp.methods.base`): the registry the config, the round loop
and the backends read. A new method is a module with a :class:`Method` subclass and a line
here, or, outside this package, the same module registered in the ``tff_idp.methods``
entry-point group of the package that ships it (``[project.entry-points."tff_idp.methods"]``
``<name> = "<module>:<Class>"``; docs/architecture.md, "Adding a method"); no runner changes.
"""
from .base import Method, Phase
from .registry import ENTRY_POINTS, METHODS, PAPER_NAMES, PLANNERS, get, paper_name

__all__ = ["ENTRY_POINTS", "METHODS", "PAPER_NAMES", "PLANNERS", "Method", "Phase", "get",
           "paper_name"]
