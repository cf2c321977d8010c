// Package doctor checks the machine a manager runs on, and the manager running there, for what stops agents' browser calls.
package doctor
