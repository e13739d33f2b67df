"""The newsroom: the admin's front page (issue 26), for the signed-in editor and their role."""
