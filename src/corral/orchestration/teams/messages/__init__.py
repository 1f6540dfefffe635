"""Teams messaging: messages between members and to the lead, records, their SQL and the verbs."""
