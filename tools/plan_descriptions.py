"""What models read about the plan tools: one description per tool and per argument."""

from replan.state.plans import MAX_CONTENT_SIZE, MAX_NAME_LENGTH, SUGGESTED_STATUSES

_REVISION_HINT = (
    "Every write raises a plan's revision by one. Pass the revision you last saw as "
    "last_known_revision and the call is refused, changing nothing, if someone else wrote "
    "the plan in between."
)

WRITE_PLAN = (
    "Create a shared plan (a markdown document other agents can read and edit by name) or "
    "replace the body of an existing one. " + _REVISION_HINT + " Use last_known_revision=0 "
    "to create a plan only if the name is still free. Returns the plan's details and its "
    "new revision, without the body."
)
READ_PLAN = (
    "Fetch a plan by name: its body, title, author, status and current revision. Keep the "
    "revision: pass it as last_known_revision when you write the plan back."
)
LIST_PLANS = (
    "List every shared plan with its title, author, status and revision (no bodies). "
    "'warnings' names stored plans that could not be read: they exist but are damaged, so "
    "do not recreate them under the same name."
)
DELETE_PLAN = (
    "Delete a plan for everyone. Pass last_known_revision to delete only the version you have seen."
)
UPDATE_PLAN_FROM_FILE = (
    "Create or replace a plan's body with the text of a file in the workspace (UTF-8, at "
    f"most {MAX_CONTENT_SIZE}). Handy after editing an exported plan: the body does not have "
    "to pass through the conversation. " + _REVISION_HINT
)
EXPORT_PLAN_TO_FILE = (
    "Write a plan's body to a file in the workspace so it can be edited there; missing "
    "folders are created. An existing file is kept unless overwrite is true. Returns where "
    "it was written, the revision and the byte count, not the body."
)
SET_PLAN_STATUS = (
    "Change only the status label of an existing plan (the body is untouched and not "
    "returned). " + _REVISION_HINT
)
GET_PLAN_STATUS = "Get a plan's status label and revision, without its body."

NAME = (
    f"Plan name: 1 to {MAX_NAME_LENGTH} characters, lowercase letters, digits, '-' and '_', "
    "starting with a letter or digit, e.g. 'release' or 'db-migration'. Other names are "
    "refused, not corrected."
)
CONTENT = "The whole plan body in markdown; it replaces the previous body and may not be empty."
TITLE = "Optional human-readable title; left unchanged when omitted."
AUTHOR = "Who is writing (usually your agent name); left unchanged when omitted."
STATUS = (
    "Free-form lifecycle label such as "
    + ", ".join(repr(status) for status in SUGGESTED_STATUSES)
    + "; left unchanged when omitted."
)
NEW_STATUS = "The new status label, e.g. " + ", ".join(repr(s) for s in SUGGESTED_STATUSES) + "."
LAST_KNOWN_REVISION = (
    "The plan revision you last read. The call is refused if the plan is now at another "
    "revision; 0 means the plan must not exist yet. Omit it to skip the check."
)
IMPORT_PATH = "Path of the file to read, relative to the workspace folder."
EXPORT_PATH = "Path of the file to write, relative to the workspace folder."
OVERWRITE = "Replace the file if it already exists (default false: refuse)."
