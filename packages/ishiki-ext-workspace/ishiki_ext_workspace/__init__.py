"""The workspace extension of Ishiki Host: a confined file workspace for a persona.

Installing the distribution ``ishiki-ext-workspace`` registers ``workspace`` in the entry-point group
``ishiki.ext``; a profile enables it with ``extends: {workspace: {config: {...}}}``. Each runtime then gets
the ``workspace://<mount>/<path>`` resource scheme, the tools list_files, read_file, write_file, edit_file,
search_files and delete_file (trust ``trusted``), an optional ``shell`` (trust ``owner``, off by default, not a
security boundary) and a prompt section naming its mounts. See the package README for the configuration.
"""

from ishiki_ext_workspace._config import CONFIG_SCHEMA, ROOT_MOUNT, Mount, Settings, settings_from_config
from ishiki_ext_workspace._extension import Workspace, WorkspaceExtension, render_instructions
from ishiki_ext_workspace._paths import SCHEME, Location, locate
from ishiki_ext_workspace._scheme import WorkspaceScheme
from ishiki_ext_workspace._tools import PARAMETERS, WorkspaceTools

__all__ = [
    "CONFIG_SCHEMA",
    "PARAMETERS",
    "ROOT_MOUNT",
    "SCHEME",
    "Location",
    "Mount",
    "Settings",
    "Workspace",
    "WorkspaceExtension",
    "WorkspaceScheme",
    "WorkspaceTools",
    "locate",
    "render_instructions",
    "settings_from_config",
]
