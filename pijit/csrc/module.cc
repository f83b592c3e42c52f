void pijit_placeholder() {}
