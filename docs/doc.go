// Package docs holds beamconnect's documentation: these Markdown pages,
// their figures, and a test that runs every command the pages (and the
// README) show, checks their links, and keeps references a reader of the
// repository cannot follow out of the pages and the help texts.
package docs
