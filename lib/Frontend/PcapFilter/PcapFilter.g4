// PcapFilter.g4 - the tcpdump (pcap-filter) expression language.
//
// The structure follows libpcap's grammar (man pcap-filter): 'and' and 'or'
// have the same precedence and associate to the left; 'not' binds tighter;
// a bare operand after 'and'/'or' ("host a or b") inherits the qualifiers
// of the term before it (PcapFilter.cpp resolves that). Arithmetic
// precedence, loosest first: '|' and '^', '&', shifts, '+' '-', '*' '/'
// '%', unary minus.

grammar PcapFilter;

program : expr? EOF ;

expr
  : expr boolop operand        # binaryExpr
  | term                       # termExpr
  ;

boolop : AND | ANDAND | OR | OROR ;

// After 'and'/'or': a term, or a bare address/number that inherits the
// qualifiers of the term before it.
operand : term | id ;

term
  : notop term                 # notTerm
  | rterm                      # plainTerm
  ;

notop : NOT | BANG ;

rterm
  : head id                    # qualified
  | LPAREN expr RPAREN         # parenthesized
  | pname                      # protocol
  | arith relop arith          # relation
  | other                      # otherPrimitive
  ;

head
  : pname? dqual aqual?        # headDirection
  | pname? aqual               # headAddress
  | pname? PROTO               # headProto
  | pname? PROTOCHAIN          # headProtochain
  | pname? (BROADCAST | MULTICAST)  # headCast
  | pname? GATEWAY             # headGateway
  ;

dqual
  : SRC (OR DST | AND DST)?
  | DST (OR SRC | AND SRC)?
  ;

aqual : HOST | NET | PORT | PORTRANGE ;

id
  : notop id                                  # notId
  | LPAREN id ((AND | ANDAND | OR | OROR) id)* RPAREN  # idList
  | HID SLASH NUM                             # ipv4Prefix
  | HID MASK HID                              # ipv4Mask
  | HID                                       # ipv4
  | HID6 SLASH NUM                            # ipv6Prefix
  | HID6                                      # ipv6
  | EID                                       # mac
  | NUM DASH NUM                              # numRange
  | NUM                                       # number
  | BACKSLASH? name                           # named
  ;

// Protocol names: the keywords that name protocols.
pname
  : LINK | ETHER | IP | IP6 | ARP | RARP | TCP | UDP | ICMP | ICMP6 | IGMP
  | SCTP | AH | ESP | PIM | VRRP | IGRP | CARP
  ;

name : WORD | pname ;

relop : GT | GE | EQ | EQEQ | NE | LT | LE ;

arith
  : LPAREN arith RPAREN                        # parenArith
  | DASH arith                                 # negate
  | arith (STAR | SLASH | PERCENT) arith       # mulDiv
  | arith (PLUS | DASH) arith                  # addSub
  | arith (SHL | SHR) arith                    # shift
  | arith AMP arith                            # bitAnd
  | arith (PIPE | CARET) arith                 # bitOr
  | pname LBRACKET arith (COLON NUM)? RBRACKET # access
  | LEN                                        # length
  | NUM                                        # arithNumber
  | WORD                                       # constant
  ;

other
  : LESS NUM                   # less
  | GREATER NUM                # greater
  | VLAN NUM?                  # vlan
  | MPLS NUM?                  # mpls
  | INBOUND                    # inbound
  | OUTBOUND                   # outbound
  ;

// Keywords (before WORD, which they would also match).
AND : 'and' ;
OR : 'or' ;
NOT : 'not' ;
SRC : 'src' ;
DST : 'dst' ;
HOST : 'host' ;
NET : 'net' ;
MASK : 'mask' ;
PORT : 'port' ;
PORTRANGE : 'portrange' ;
PROTO : 'proto' ;
PROTOCHAIN : 'protochain' ;
GATEWAY : 'gateway' ;
BROADCAST : 'broadcast' ;
MULTICAST : 'multicast' ;
LESS : 'less' ;
GREATER : 'greater' ;
LEN : 'len' ;
VLAN : 'vlan' ;
MPLS : 'mpls' ;
INBOUND : 'inbound' ;
OUTBOUND : 'outbound' ;
LINK : 'link' ;
ETHER : 'ether' ;
IP : 'ip' ;
IP6 : 'ip6' ;
ARP : 'arp' ;
RARP : 'rarp' ;
TCP : 'tcp' ;
UDP : 'udp' ;
ICMP : 'icmp' ;
ICMP6 : 'icmp6' ;
IGMP : 'igmp' ;
SCTP : 'sctp' ;
AH : 'ah' ;
ESP : 'esp' ;
PIM : 'pim' ;
VRRP : 'vrrp' ;
IGRP : 'igrp' ;
CARP : 'carp' ;

ANDAND : '&&' ;
OROR : '||' ;
BANG : '!' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACKET : '[' ;
RBRACKET : ']' ;
COLON : ':' ;
SLASH : '/' ;
BACKSLASH : '\\' ;
STAR : '*' ;
PERCENT : '%' ;
PLUS : '+' ;
DASH : '-' ;
AMP : '&' ;
PIPE : '|' ;
CARET : '^' ;
SHL : '<<' ;
SHR : '>>' ;
GE : '>=' ;
LE : '<=' ;
NE : '!=' ;
EQEQ : '==' ;
GT : '>' ;
LT : '<' ;
EQ : '=' ;

// A MAC address: six hexadecimal bytes separated by ':', '-' or '.'
// (libpcap also accepts 0011.2233.4455); before HID6, which matches the
// ':' form too.
EID
  : HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX?
  | HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX?
  | HEX HEX HEX HEX '.' HEX HEX HEX HEX '.' HEX HEX HEX HEX
  ;
// An IPv6 address: at least two ':' (so that "13:1" in "tcp[13:1]" stays
// two numbers); checked properly when it is used.
HID6
  : HEX* ':' HEX* ':' (HEX | ':')* ('.' DIGIT+ '.' DIGIT+ '.' DIGIT+ '.' DIGIT+)?
  ;
// An IPv4 address or network: 2 to 4 dotted numbers.
HID : DIGIT+ '.' DIGIT+ ('.' DIGIT+ ('.' DIGIT+)?)? ;
NUM : '0' [xX] HEX+ | DIGIT+ ;
// Names: host and port names, named constants (tcp-syn, icmp-echo, ...).
WORD : [a-zA-Z_] [a-zA-Z0-9_.\-]* ;

WS : [ \t\r\n]+ -> skip ;
// Anything else is a lexical error, reported with its position.
ERROR_CHAR : . ;

fragment DIGIT : [0-9] ;
fragment HEX : [0-9a-fA-F] ;
