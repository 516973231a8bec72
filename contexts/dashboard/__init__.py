"""The dashboard's shared floor and the `contexts` pages: what every page view
shares (`common`), the overview, sessions and declarations pages, their forms,
and the chart geometry the templates draw."""
