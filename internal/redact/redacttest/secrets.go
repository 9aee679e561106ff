// Package redacttest is the table of secrets every store of cx is tested
// against: the redactor's own tests, and each place text is kept (the
// archive, the recall index) greps for them after the fact.
package redacttest

// Secret is one secret in the text it hides in.
type Secret struct{ Name, In, Secret string }

// Secrets is the redaction table.
var Secrets = []Secret{
	{"openai", "key sk-proj-AbCdEf0123456789AbCdEf0123456789 here", "sk-proj-AbCdEf0123456789AbCdEf0123456789"},
	{"openai classic", "OPENAI=sk-ABCDEFGHIJKLMNOPQRSTUVWX", "sk-ABCDEFGHIJKLMNOPQRSTUVWX"},
	{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"},
	{"github", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"},
	{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"},
	{"gitlab", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"},
	{"slack", "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"},
	{"aws id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"aws secret env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"google", "AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIzaSyA-1234567890abcdefghijklmnopqrstu"},
	{"hf", "hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf_abcdefghijklmnopqrstuvwxyzABCDEF"},
	{"stripe", "sk_live_abcdefghijklmnopqrstuvwx", "sk_live_abcdefghijklmnopqrstuvwx"},
	{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
	{"bearer", "curl -H 'Authorization: Bearer abc.def-123456'", "abc.def-123456"},
	{"x-api-key", "X-API-Key: 0123456789abcdef", "0123456789abcdef"},
	{"env assign", "export DATABASE_PASSWORD=hunter2hunter2", "hunter2hunter2"},
	{"quoted assign", `API_KEY="q1w2e3r4t5y6"`, "q1w2e3r4t5y6"},
	{"yaml", "openviking_api_key: s3cr3tvalue", "s3cr3tvalue"},
	{"url creds", "postgres://admin:Pa55word!@db:5432/app", "Pa55word!"},
	{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA1234"},
	{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEA"},
}
